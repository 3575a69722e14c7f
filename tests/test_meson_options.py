"""The engine builds from two places: the repository's root (pip install . through
meson-python) and engine/ alone (meson setup build engine). Each needs its own
meson_options.txt; they must stay the same, or one build quietly differs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_two_meson_options_files_agree():
    root, engine = (ROOT / "meson_options.txt").read_text(), (ROOT / "engine" / "meson_options.txt").read_text()
    assert root == engine, "meson_options.txt and engine/meson_options.txt differ: make them the same"
