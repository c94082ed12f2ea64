"""What engines share: run options, source progress (punctuations, late events, minting), the physical plan,
the metrics builder and garbage collection during a run."""
