"""What engines share: run options, the sources' punctuations (with late events and minting), the physical plan,
the metrics builder and garbage collection during a run."""
