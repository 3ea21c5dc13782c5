"""Revenue: trusted money from the site's backend (server key, Standard plan and above).

- money.py: amounts to integer minor units per ISO 4217 exponent, with Decimal, never float
- server_events.py: a server event recorded, an orderId stored once per site
"""
