"""Peewee models. Tables are created and changed only by migrations (app/migrations)."""
from models.api_key import ApiKey
from models.base import BaseModel, JSONField, database
from models.batch import Batch
from models.connect_code import ConnectCode
from models.crawl_hit import CrawlHit
from models.event import Event
from models.event_slot import EventSlot
from models.idempotency_key import IdempotencyKey
from models.ingest_tally import IngestTally
from models.instance_secret import InstanceSecret
from models.oauth_client import OAuthClient
from models.oauth_code import OAuthCode
from models.oauth_grant import OAuthGrant
from models.oauth_token import OAuthToken
from models.rollup_mark import RollupMark
from models.server_event import ServerEvent
from models.site import Site
from models.upgrade_task import UpgradeTask
from models.usage import Usage
from models.visit import Visit
from models.visit_page import VisitPage
from models.visitor_salt import VisitorSalt
from models.visitor_state import VisitorState

ALL_MODELS = (Site, ApiKey, Batch, Event, ServerEvent, CrawlHit, Usage, IngestTally,
              InstanceSecret, VisitorSalt, VisitorState, IdempotencyKey, Visit, VisitPage,
              EventSlot, RollupMark, OAuthClient, ConnectCode, OAuthGrant, OAuthCode, OAuthToken,
              UpgradeTask)

__all__ = ["ALL_MODELS", "ApiKey", "BaseModel", "Batch", "ConnectCode", "CrawlHit", "Event",
           "EventSlot", "IdempotencyKey", "IngestTally", "InstanceSecret", "JSONField",
           "OAuthClient", "OAuthCode", "OAuthGrant", "OAuthToken", "RollupMark",
           "ServerEvent", "Site", "UpgradeTask", "Usage", "Visit", "VisitPage", "VisitorSalt",
           "VisitorState", "database"]
