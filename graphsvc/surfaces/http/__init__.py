"""The Starlette JSON surface: thin handlers over the shared GraphService."""
