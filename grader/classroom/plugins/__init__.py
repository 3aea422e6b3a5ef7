"""The course's nbgrader plugins, one class per file; ``grader.classroom.nbgrader_plugins`` names them all (nbgrader_config.py)."""
