"""Screenshot the demo paper's front page for docs/: docs/screenshots/front-1280.png (the whole
page, 1280 px wide) and front-390.png (a phone's first screen, 390 x 844 px).

A fresh demo paper (`flask init-db`, `flask seed-demo`) in a throwaway instance folder, served on
a loopback port, shot by Debian's Chromium through Playwright with every request to another
host refused (the script says how many there were: the front should need none).

    .venv/bin/python scripts/front_screenshots.py [--out docs/screenshots]
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = {"front-1280.png": (1280, 900, True), "front-390.png": (390, 844, False)}


def seed(instance: Path) -> dict:
    """The environment of a demo paper in `instance` (migrated and seeded by the CLI)."""
    env = {**os.environ, "INSTANCE_PATH": str(instance), "FLASK_APP": "app",
           "DATABASE_URL": f"sqlite:///{instance / 'paperdesk.db'}"}
    flask = str(Path(sys.executable).parent / "flask")
    for command in (["init-db"], ["seed-demo"]):
        subprocess.run([flask, *command], cwd=ROOT, env=env, check=True, capture_output=True)
    return env


def shoot(origin: str, out: Path) -> int:
    """Take SHOTS of `origin`'s front page into `out`; returns how many foreign requests were refused."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    own = urlsplit(origin).netloc
    refused: list[str] = []

    def guard(route):
        if urlsplit(route.request.url).netloc == own:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for name, (width, height, full) in SHOTS.items():
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            page.route("**/*", guard)
            page.goto(origin + "/", wait_until="networkidle")
            png = page.screenshot(full_page=full)
            # A palette of 256 colours keeps type and the art legible at a fraction of the size.
            image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.MEDIANCUT)
            image.save(out / name, optimize=True)
            context.close()
        browser.close()
    return len(refused)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        env = seed(Path(folder))
        os.environ.update({key: env[key] for key in ("INSTANCE_PATH", "DATABASE_URL")})
        sys.path.insert(0, str(ROOT))
        from werkzeug.serving import make_server

        from app import create_app

        server = make_server("127.0.0.1", 0, create_app(), threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            refused = shoot(f"http://localhost:{server.server_port}", args.out)
        finally:
            server.shutdown()
    print(f"wrote {', '.join(SHOTS)} to {args.out}; {refused} request(s) to other hosts refused")


if __name__ == "__main__":
    main()
