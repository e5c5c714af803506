"""The server side of the OpenEnv environment: ``server.app:app`` (openenv.yaml's ``app``)."""
