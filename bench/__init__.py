"""egis's benchmarks, run from the checkout's root as `python -m bench.<group>.<script>`:
harness/ (the databases, servers, load and seeds they share), ingest/, read/, maintenance/.
What each measures and its current figures: bench/README.md."""
