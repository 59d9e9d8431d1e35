"""Small utilities that several packages use and that import nothing of the project: the bottom
of the house beside ``engine/`` (``.importlinter`` keeps it so)."""
