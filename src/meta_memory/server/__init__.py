"""Transports: HTTP (Starlette under uvicorn) and newline-delimited stdio."""
