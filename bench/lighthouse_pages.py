"""Lighthouse on the help center (issue 41): the home, a category, a question and a search page,
in en and ar, with Lighthouse's phone (default) and desktop (``--preset=desktop``) settings,
against a real ``faq serve`` in a world of its own (embedded PostgreSQL and Redis), in headless
Chromium. Targets: accessibility, best practices and SEO 100, performance >= 95; exits 1 if any
score is below its target.

    (cd bench/lighthouse && npm ci)   # once: Lighthouse, pinned in package.json
    .venv/bin/python -m bench.lighthouse_pages [--json out.json]

Not part of ``make bench``: 16 Lighthouse runs take minutes and need Node and Chromium.
``CHROME_PATH`` defaults to ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import seed
from bench.http import ok
from bench.standalone import in_world

ORG = "bench-lighthouse"
HERE = Path(__file__).resolve().parent / "lighthouse"
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
TARGETS = {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 100}
FORMS = ("mobile", "desktop")
LOCALES = ("en", "ar")
CHROME_FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-background-networking "
    "--disable-component-update --disable-sync --no-first-run"
)
# Realistic content: a category of a few questions, Markdown answers with lists, a table and
# links, each with its Arabic translation.
CONTENT: list[dict[str, dict[str, str]]] = [
    {
        "title": {
            "en": "How do I rotate an API key?",
            "ar": "كيف أغيّر مفتاح واجهة البرمجة؟",
        },
        "answer": {
            "en": (
                "Open **Settings → API keys** and choose *Create key*.\n\n"
                "1. Give the new key a name and the scopes it needs.\n"
                "2. Deploy it where the old one was used.\n"
                "3. Revoke the old key: it stops working within a second everywhere.\n\n"
                "| Scope | Reads | Writes |\n|---|---|---|\n| read | yes | no |\n"
                "| write | yes | yes |\n\n"
                "See [the API reference](https://example.com/docs) for the details.\n"
            ),
            "ar": (
                "افتح **الإعدادات ← مفاتيح الواجهة** واختر *إنشاء مفتاح*.\n\n"
                "1. أعطِ المفتاح الجديد اسمًا والصلاحيات التي يحتاجها.\n"
                "2. ضعه حيث كان المفتاح القديم مستخدمًا.\n"
                "3. ألغِ المفتاح القديم: يتوقف عن العمل خلال ثانية في كل مكان.\n\n"
                "| الصلاحية | قراءة | كتابة |\n|---|---|---|\n| read | نعم | لا |\n"
                "| write | نعم | نعم |\n\n"
                "راجع [مرجع الواجهة](https://example.com/docs) للتفاصيل.\n"
            ),
        },
    },
    {
        "title": {
            "en": "Which scopes can an API key have?",
            "ar": "ما الصلاحيات التي يمكن أن يحملها مفتاح الواجهة؟",
        },
        "answer": {
            "en": (
                "A key has one or more scopes: `read` lists and reads, `write` creates and "
                "edits, `review` approves drafts. Give each key the fewest it needs.\n"
            ),
            "ar": (
                "للمفتاح صلاحية أو أكثر: `read` للقراءة، و`write` للإنشاء والتعديل، و`review` "
                "لاعتماد المسودات. أعطِ كل مفتاح أقل ما يحتاجه.\n"
            ),
        },
    },
    {
        "title": {
            "en": "What happens when a key leaks?",
            "ar": "ماذا يحدث إذا تسرّب مفتاح؟",
        },
        "answer": {
            "en": (
                "Revoke it at once from **Settings → API keys**; requests made with it are "
                "refused within a second. Then create a new key and check the audit log.\n"
            ),
            "ar": (
                "ألغِه فورًا من **الإعدادات ← مفاتيح الواجهة**؛ تُرفض الطلبات التي تستخدمه خلال "
                "ثانية. ثم أنشئ مفتاحًا جديدًا وراجع سجل التدقيق.\n"
            ),
        },
    },
]
CATEGORY = {
    "en": {"name": "API keys", "description": "Creating, scoping and revoking keys."},
    "ar": {"name": "مفاتيح الواجهة", "description": "إنشاء المفاتيح وتحديد صلاحياتها وإلغاؤها."},
}
SEARCH = {"en": "rotate key", "ar": "مفتاح"}


def prepare(base: str, key: str) -> dict[str, str]:
    """The org's content in en and ar, the help center on; the pages' paths by name and locale."""
    api = f"/api/v1/{ORG}"
    ok(base, "PATCH", f"{api}/settings", key, {"locales": ["en", "ar"], "defaultLocale": "en"})
    ok(
        base,
        "PATCH",
        f"{api}/settings",
        key,
        {"helpCenter": {"enabled": True, "contactUrl": "https://example.com/contact"}},
    )
    category = ok(base, "POST", f"{api}/categories", key, CATEGORY["en"])["data"]
    ok(base, "PUT", f"{api}/categories/{category['id']}/translations/ar", key, CATEGORY["ar"])
    slug = ""
    for entry in CONTENT:
        body = {
            "title": entry["title"]["en"],
            "answer": entry["answer"]["en"],
            "categoryId": category["id"],
            "status": "published",
        }
        made = ok(base, "POST", f"{api}/questions", key, body)["data"]
        slug = slug or made["slug"]
        translated = {
            "title": entry["title"]["ar"],
            "answer": entry["answer"]["ar"],
            "status": "published",
        }
        ok(base, "PUT", f"{api}/questions/{made['id']}/translations/ar", key, translated)
    pages = {}
    for locale in LOCALES:
        root = f"/hc/{ORG}/{locale}"
        pages[f"home {locale}"] = f"{root}/"
        pages[f"category {locale}"] = f"{root}/categories/{category['slug']}"
        pages[f"question {locale}"] = f"{root}/questions/{slug}"
        pages[f"search {locale}"] = f"{root}/search?q={SEARCH[locale].replace(' ', '+')}"
    return pages


def lighthouse(url: str, form: str, out: Path) -> dict[str, Any]:
    """One Lighthouse run; its JSON report."""
    argv = [
        *("npx", "--no-install", "lighthouse", url),
        *("--output=json", f"--output-path={out}", "--quiet"),
        f"--only-categories={','.join(CATEGORIES)}",
        f"--chrome-flags={CHROME_FLAGS} --user-data-dir={out.with_suffix('.profile')}",
    ]
    if form == "desktop":
        argv.append("--preset=desktop")
    env = {**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")}
    subprocess.run(argv, cwd=HERE, env=env, check=True, timeout=300, capture_output=True)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def failed_audits(report: dict[str, Any]) -> list[str]:
    """The audits that cost points: ``id (score)``, for the table's notes."""
    out = []
    for category in report["categories"].values():
        for ref in category["auditRefs"]:
            audit = report["audits"][ref["id"]]
            if ref["weight"] and audit["score"] is not None and audit["score"] < 1:
                out.append(f"{ref['id']} ({audit['score']})")
    return out


def measure(base: str, pages: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="lighthouse-") as tmp:
        for name, path in pages.items():
            for form in FORMS:
                out = Path(tmp) / f"{name.replace(' ', '-')}-{form}.json"
                report = lighthouse(base + path, form, out)
                scores = {
                    c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES
                }
                rows.append(
                    {
                        "page": name,
                        "form": form,
                        "scores": scores,
                        "failed": failed_audits(report),
                        "lighthouse": report["lighthouseVersion"],
                        "chromium": report["environment"]["hostUserAgent"],
                    }
                )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = "| page | form factor | " + " | ".join(CATEGORIES) + " |"
    lines = [head, "|" + "---|" * (2 + len(CATEGORIES))]
    for row in rows:
        cells = [str(row["scores"][c]) for c in CATEGORIES]
        lines.append(f"| {row['page']} | {row['form']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def below_target(rows: list[dict[str, Any]]) -> list[str]:
    return [
        f"{row['page']} {row['form']}: {c} {row['scores'][c]} < {TARGETS[c]} ({row['failed']})"
        for row in rows
        for c in CATEGORIES
        if row["scores"][c] < TARGETS[c]
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lighthouse_pages")
    parser.add_argument("--json", type=Path, help="write the rows there too")
    args = parser.parse_args(argv)
    if not (HERE / "node_modules" / ".bin" / "lighthouse").exists():
        print("Lighthouse is not installed: (cd bench/lighthouse && npm ci)", file=sys.stderr)
        return 2

    def work(world: Any) -> list[dict[str, Any]]:
        (record,) = seed.create_orgs([ORG], out_dir=world.tmp / "orgs", processes=1)
        server = world.serve()
        return measure(server.base, prepare(server.base, record["key"]))

    rows = in_world(work)
    print(table(rows))
    print(f"Lighthouse {rows[0]['lighthouse']}; {rows[0]['chromium']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    missed = below_target(rows)
    for line in missed:
        print("BELOW TARGET", line)
    return 1 if missed else 0


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
