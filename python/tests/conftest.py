"""Hypothesis profiles: the default runs the same examples every time (CI must not depend on
luck); `HYPOTHESIS_PROFILE=explore` draws new ones on every run, for hunting bugs."""

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
