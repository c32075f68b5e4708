"""`lttw init` through the real command on inputs it used to take silently: a CSV header
naming a column twice (pandas renamed the second ``text.1``), and a project folder inside
an existing git checkout (a nested .git), and no dvc installed. One line each, nothing
written."""

from __future__ import annotations

import subprocess

from support.cli_runner import assert_user_error, invoke


def test_a_header_naming_a_column_twice_is_refused(tmp_path):
    data = tmp_path / "dup.csv"
    data.write_text("text,label,text\na b,x,c\nd e,y,f\n", encoding="utf-8")
    result = invoke("init", tmp_path / "project", "--data", data)
    assert_user_error(result, str(data), "'text' twice (columns 1 and 3)", code=3)
    assert not (tmp_path / "project").exists()


def test_a_project_inside_a_git_checkout_is_refused(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    data = tmp_path / "texts.csv"
    data.write_text("text,label\na b,x\nc d,y\n", encoding="utf-8")
    result = invoke("init", outer / "project", "--data", data)
    assert_user_error(result, "inside the git checkout", str(outer.resolve()))
    assert not (outer / "project").exists()


def test_without_dvc_init_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "dvc" else find_spec(name, *a)
    )
    data = tmp_path / "texts.csv"
    rows = "".join(f"text number {i},{'xy'[i % 2]}\n" for i in range(60))
    data.write_text("text,label\n" + rows, encoding="utf-8")
    result = invoke("init", tmp_path / "project", "--data", data)
    assert_user_error(result, "dvc is not installed", "lttw[train]")
    assert not (tmp_path / "project").exists()
