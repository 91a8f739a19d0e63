"""Turn an accepted candidate PR into a task: patch split, promises, contract, controls, probes."""
