"""One module per `graphsvc` sub-command (discovered by graphsvc.surfaces.cli)."""
