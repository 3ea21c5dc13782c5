"""Read benchmarks: the agent read surface (MCP tools) on seeded databases, and OAuth."""
