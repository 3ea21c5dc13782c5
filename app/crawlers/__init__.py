"""Crawlers: crawl reports from a site's edge, and the bot filter the tracking path uses.

- user_agents.py: a user agent classified (crawler name and category, headless browsers)
- networks.py: the network named from a client IP (/24, /48 or a known operator); the IP is not kept
- verify.py: a claimed crawler verified by reverse and forward DNS
- reports.py: a crawl report recorded (browser navigations ignored, the IP never stored)
"""
