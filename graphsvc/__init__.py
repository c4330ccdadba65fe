"""graphsvc: a deterministic cold-start memory pack for coding agents, computed in Neo4j."""

__version__ = "0.1.0"
