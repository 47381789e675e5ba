"""The agent-framework integrations, each run with its real package and a scripted model."""
