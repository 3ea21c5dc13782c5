from peewee import BigAutoField, BooleanField, CharField, DateTimeField, IntegerField, TextField

from models.base import BaseModel


class CrawlHit(BaseModel):
    """A bot-like document fetch reported by a site's edge. The client IP is never stored."""

    id = BigAutoField()
    site_id = IntegerField()
    path = TextField()  # query string and fragment removed
    host = CharField(max_length=253, null=True)
    user_agent = CharField(max_length=512)
    crawler = CharField(max_length=128, null=True)
    category = CharField(max_length=32)
    network = CharField(max_length=64, null=True)  # operator name or /24 (/48) prefix
    verified = BooleanField(null=True)  # None: not checked
    spoofed = BooleanField(default=False)
    sec_fetch_dest = CharField(max_length=32, null=True)
    sec_fetch_mode = CharField(max_length=32, null=True)
    received_at = DateTimeField()

    class Meta:
        indexes = ((("site_id", "received_at"), False),)
