"""The rollups the agent's reads use: visits, their pages and events per quarter hour, merged
from the event table after ingest (mark, merging, timer), and the events every answer counts,
bounded by the mark (the read path itself: app.analytics.reading)."""
