"""visit:screen: the class of the viewport width the tracker sends as fingerprint.screenWidth.

Only the class is stored, never the width; every other fingerprint key is ignored, and a width
that is not a positive finite number is ignored too (no 400: the fingerprint is free-form).
"""
import math
from typing import Any

# Upper bounds (exclusive) in CSS px, and the class below each; xlarge from the last one on.
BREAKPOINTS = ((576, "small"), (992, "medium"), (1440, "large"))
LARGEST = "xlarge"


def screen_class(fingerprint: Any) -> str | None:
    """small (< 576), medium (576-991), large (992-1439) or xlarge (>= 1440), or None."""
    width = fingerprint.get("screenWidth") if isinstance(fingerprint, dict) else None
    if isinstance(width, bool) or not isinstance(width, (int, float)):
        return None
    if (isinstance(width, float) and not math.isfinite(width)) or width <= 0:
        return None
    return next((name for bound, name in BREAKPOINTS if width < bound), LARGEST)
