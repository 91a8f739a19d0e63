"""Work trees, shared environments, pytest runs and fault classification, on a backend."""
