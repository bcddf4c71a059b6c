"""reduction ops (spec/ops/)."""

from __future__ import annotations
