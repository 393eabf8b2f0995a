"""The core both benchmarks share; it imports no other package of the project."""
