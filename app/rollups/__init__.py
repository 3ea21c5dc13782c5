"""The rollups the agent's reads use: visits, their pages and events per quarter hour, merged
from the event table after ingest (mark, merging, timer), and the read path of every answer:
the events it counts, bounded by the mark, and where it reads them (reads, replica)."""
