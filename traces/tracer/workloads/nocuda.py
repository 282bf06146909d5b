"""A Python program that never touches CUDA (tally-trace must write no file
and say so on stderr)."""
print(sum(range(1000)))
