"""egis_client: send goals, revenue, events and crawler sightings to egis from a backend.

    from egis_client import Client, CrawlerReporter
    client = Client(host="https://ingest.example", write_key="egis_...",
                    server_key="egiss_...")
    client.goal("signup", anonymous_id=anonymous_id)

See README.md beside this package.
"""
from egis_client.client import Client
from egis_client.middleware import CrawlerReporter
from egis_client.transport import NetworkError

__version__ = "1.0.0"
__all__ = ["Client", "CrawlerReporter", "NetworkError", "__version__"]
