"""Maintenance benchmarks: growth, retention, the rollups' merge, a replica, a soak."""
