"""The loop's nodes, one per module: profile, propose, compile, verify, reflect, finish."""
