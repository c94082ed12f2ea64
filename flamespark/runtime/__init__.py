"""What engines share: source progress, punctuations, late events, the physical plan."""
