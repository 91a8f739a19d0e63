"""What every stage shares and nothing else: the error root, the one glob engine and test-file
matcher, and names used on both sides of a package border. It imports no other package of the
project, so the miner, the builder, the runners, the registry and the application can all use it.
"""
