"""Visit context (docs/ARCHITECTURE.md, "Visits"; docs/API.md, "What egis derives"): what egis
derives, coarse, from a browser request and from each event's page (country, device, browser, OS,
language, screen class; path and host; a page view's source, channel, referrer and UTM tags), and
never the raw address, User-Agent, screen width or click id. README.md, "What is collected", lists
each value and its source."""
