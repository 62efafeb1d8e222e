"""Warnings that point at the user's line: the first frame outside this package, however
deep inside diffuse (or NumPy's dispatch to it) the warning is raised."""

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_at_caller(message, category=RuntimeWarning):
    """``warnings.warn(message, category)`` attributed to the innermost caller outside the
    diffuse package."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
