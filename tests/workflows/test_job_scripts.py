"""The update-docs job's scripts on their own: `translate.sh` with a stand-in for the tool
(its contract: exit 0, 1 naming failed pages on stderr, 2), `commit-translations.sh` against a
local bare origin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / ".github" / "scripts"
SCRIPT = SCRIPTS / "commit-translations.sh"
BOT = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>"


def _env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_"))}
    # No global or system git config, so the script must bring its own identity.
    return {**keep, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


class Repo:
    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.origin = tmp_path / "origin.git"
        self.work = tmp_path / "work"
        self.other = tmp_path / "other"
        self.outputs = tmp_path / "github_output"
        self.outputs.touch()
        self.git(tmp_path, "init", "-q", "--bare", "-b", "main", str(self.origin))
        self.git(tmp_path, "clone", "-q", str(self.origin), str(self.other))
        for path, text in {
            "docs/index.md": "# Home\n",
            "docs/ja/index.md": "# ホーム\n",
            "docs/ko/index.md": "# 홈\n",
            "docs/i18n/manifest.json": "{}\n",
            "README.md": "readme\n",
        }.items():
            self.write(self.other, path, text)
        self.commit(self.other, "initial")
        self.git(tmp_path, "clone", "-q", str(self.origin), str(self.work))

    def git(self, cwd: Path, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, env=_env(self.home), capture_output=True, text=True, check=True
        ).stdout.strip()

    @staticmethod
    def write(root: Path, path: str, text: str) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")

    def commit(self, clone: Path, message: str) -> None:
        self.git(clone, "add", "-A")
        self.git(
            clone, "-c", "user.name=M", "-c", "user.email=m@example.com", "commit", "-qm", message
        )
        self.git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")

    def run(self, *options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *options, "main"],
            cwd=self.work,
            env={**_env(self.home), "GITHUB_OUTPUT": str(self.outputs)},
            capture_output=True,
            text=True,
            check=False,
        )

    def origin_log(self) -> list[str]:
        return self.git(self.origin, "log", "--format=%an <%ae>|%s", "main").splitlines()

    def origin_files(self, rev: str = "main") -> set[str]:
        return set(self.git(self.origin, "show", "--format=", "--name-only", rev).split())


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


def test_commits_only_translations_and_manifest(repo: Repo) -> None:
    repo.write(repo.work, "docs/ja/index.md", "# ホーム（更新）\n")
    (repo.work / "docs" / "ko" / "index.md").unlink()  # a deleted translation is committed too
    repo.write(repo.work, "docs/zh/index.md", "# 首页\n")  # a new language folder
    repo.write(repo.work, "docs/i18n/manifest.json", '{"v": 1}\n')
    repo.write(repo.work, "docs/index.md", "# Home, edited locally\n")  # not a translation
    repo.write(repo.work, "stray.txt", "left behind\n")

    result = repo.run()

    assert result.returncode == 0, result.stdout + result.stderr
    assert repo.origin_log()[0] == f"{BOT}|docs: update translations"
    assert repo.origin_files() == {
        "docs/ja/index.md",
        "docs/ko/index.md",
        "docs/zh/index.md",
        "docs/i18n/manifest.json",
    }
    assert "::warning title=Untranslated changes left out::" in result.stdout
    assert "docs/index.md" in result.stdout
    assert "stray.txt" in result.stdout


def test_nothing_changed_pushes_nothing(repo: Repo) -> None:
    repo.write(repo.work, "README.md", "edited, but not a translation\n")
    result = repo.run()
    assert result.returncode == 0
    assert "nothing to commit" in result.stdout
    assert len(repo.origin_log()) == 1


def test_rebases_onto_a_moved_remote(repo: Repo) -> None:
    repo.write(repo.other, "README.md", "moved on\n")
    repo.commit(repo.other, "someone else")
    repo.write(repo.work, "docs/ja/index.md", "# ホーム 2\n")

    result = repo.run()

    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split("|")[1] for line in repo.origin_log()] == [
        "docs: update translations",
        "someone else",
        "initial",
    ]
    assert repo.origin_files() == {"docs/ja/index.md"}


def test_a_conflict_resets_to_the_new_tip_and_asks_for_a_second_translation(repo: Repo) -> None:
    repo.write(repo.other, "docs/ja/index.md", "# 人の手で\n")
    repo.commit(repo.other, "hand-edited translation")
    repo.write(repo.work, "docs/ja/index.md", "# ボット\n")

    result = repo.run()

    assert result.returncode == 0, result.stdout + result.stderr
    assert "translating again from its new tip" in result.stdout
    assert repo.outputs.read_text(encoding="utf-8") == "retranslate=true\n"
    assert [line.split("|")[1] for line in repo.origin_log()] == [
        "hand-edited translation",
        "initial",
    ]
    # The workspace is the new tip, clean and not mid-rebase: the next translation starts there.
    assert repo.git(repo.work, "rev-parse", "HEAD") == repo.git(repo.origin, "rev-parse", "main")
    assert repo.git(repo.work, "status", "--porcelain") == ""


def test_a_second_conflict_fails_without_pushing(repo: Repo) -> None:
    repo.write(repo.other, "docs/ja/index.md", "# 人の手で\n")
    repo.commit(repo.other, "hand-edited translation")
    repo.write(repo.work, "docs/ja/index.md", "# ボット\n")

    result = repo.run("--last")

    assert result.returncode == 1
    assert "::error title=Rebase conflict::" in result.stdout
    assert repo.outputs.read_text(encoding="utf-8") == ""
    assert len(repo.origin_log()) == 2
    assert not (repo.work / ".git" / "rebase-merge").exists()


def test_with_a_token_it_pushes_through_the_authenticated_url_not_the_checkouts_remote(
    repo: Repo, tmp_path: Path
) -> None:
    # The workflow's checkout keeps no credentials; the commit step gets GITHUB_TOKEN and must
    # fetch and push through its own authenticated URL. Here `origin` points nowhere, and git
    # maps only the authenticated URL (token included) to the real bare repository.
    repo.git(repo.work, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    authenticated = "https://x-access-token:tok-123@github.example/owner/repo.git"
    config = tmp_path / "gitconfig"
    config.write_text(f'[url "{repo.origin}"]\n\tinsteadOf = {authenticated}\n', encoding="utf-8")
    # Someone else pushes first, so the script's first push is refused and it must fetch.
    repo.write(repo.other, "README.md", "moved on\n")
    repo.commit(repo.other, "other change")
    repo.write(repo.work, "docs/ja/index.md", "# ホーム（新）\n")
    env = {
        **_env(repo.home),
        "GIT_CONFIG_GLOBAL": str(config),
        "GITHUB_TOKEN": "tok-123",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_REPOSITORY": "owner/repo",
    }
    done = subprocess.run(
        [str(SCRIPT), "main"], cwd=repo.work, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split("|")[1] for line in repo.origin_log()[:2]] == [
        "docs: update translations",
        "other change",
    ]
    # The token was never written into the clone's configuration.
    assert "tok-123" not in (repo.work / ".git" / "config").read_text(encoding="utf-8")


# -- translate.sh ----------------------------------------------------------------------------------

STAND_IN = """\
import sys
print("translated: 5, failed: 1")
print("[6/6] ja/guide.md: progress on stderr", file=sys.stderr)
print("docs/ja/guide.md:7: a code block of the English is missing", file=sys.stderr)
sys.exit({status})
"""


def _translate(tmp_path: Path, status: int, *options: str) -> subprocess.CompletedProcess[str]:
    """Run translate.sh in `tmp_path` on a stand-in tool that exits with `status`."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    (tmp_path / "scripts" / "translate_docs.py").write_text(STAND_IN.format(status=status))
    (tmp_path / "runner").mkdir(exist_ok=True)
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(tmp_path / "runner"),
        "OPENAI_API_KEY": "sk-test",
    }
    return subprocess.run(
        [str(SCRIPTS / "translate.sh"), *options],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_failed_pages_do_not_fail_the_translation_and_the_report_names_them(
    tmp_path: Path,
) -> None:
    translated = _translate(tmp_path, 1)
    assert translated.returncode == 0, translated.stdout + translated.stderr
    # The tool's stdout and stderr both reach the log.
    assert "translated: 5, failed: 1" in translated.stdout
    assert "docs/ja/guide.md:7: a code block" in translated.stdout

    report = _translate(tmp_path, 0, "--report")
    assert report.returncode == 1
    assert report.stdout.splitlines() == [
        "::error file=docs/ja/guide.md,line=7,title=Translation failed::"
        "docs/ja/guide.md:7: a code block of the English is missing",
        "The other pages were pushed; the next run retries the failed ones.",
    ]


@pytest.mark.parametrize("status", [0, 2])
def test_a_clean_run_reports_nothing_and_a_usage_error_fails_at_once(
    tmp_path: Path, status: int
) -> None:
    _translate(tmp_path, 1)  # what an earlier failed translation left is replaced
    translated = _translate(tmp_path, status)
    assert translated.returncode == status
    report = _translate(tmp_path, 0, "--report")
    assert (report.returncode, report.stdout) == (0, "Every page was translated.\n")
