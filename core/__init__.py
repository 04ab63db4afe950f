"""What every app may use and nothing here depends on: roles, error texts, environment parsing.

The bottom layer of the import contract in pyproject.toml: core imports no app of the project.
"""
