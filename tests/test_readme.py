"""The README: a short front page that starts with the two set-up commands,
and whose Python blocks run as written and print what their comments say."""

import pathlib
import re
import warnings

import pytest

README = pathlib.Path(__file__).parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", TEXT, re.S)
PYTHON = [code for language, code in BLOCKS if language == "python"]


def test_it_is_short_and_starts_with_the_two_commands():
    assert len(TEXT.splitlines()) <= 90
    language, code = BLOCKS[0]
    before = TEXT.split("```bash")[0].strip().splitlines()
    assert language == "bash" and len(before) == 1 and before[0].startswith("# ")  # the title
    assert code.splitlines() == ["python -m pip install . && python -m sklearn_pltf",
                                 'python -m pip install ".[test]" && python -m pytest']
    # Commit hashes belong in the benchmarks' results files (benchmarks/results/).
    assert not re.search(r"\b[0-9a-f]{7,40}\b", TEXT)


def test_there_are_python_examples():
    assert len(PYTHON) >= 2


@pytest.mark.parametrize("code", PYTHON, ids=lambda code: code.splitlines()[-1][:40])
def test_each_python_block_prints_what_its_comment_says(code, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, str(README), "exec"), {})
    printed = capsys.readouterr().out.strip().splitlines()
    promised = [line.split("#", 1)[1].strip() for line in code.splitlines()
                if line.startswith("print(") and "#" in line]
    assert len(printed) == len(promised)
    for out, comment in zip(printed, promised):
        if comment.startswith("about"):  # "about 0.91 and 0.80": within the last digit
            expected = [float(v) for v in re.findall(r"\d+\.\d+", comment)]
            got = [float(v) for v in re.findall(r"\d+\.\d+", out)]
            assert got == pytest.approx(expected, abs=0.01), (out, comment)
        else:
            assert out == comment
