"""The doc-example collector itself (tests/doc_examples.py, issue 29): it finds every fence with its
marker, reads shell lines as a shell would split them, rejects what the real parsers reject, and
fails an unmarked fence or a failing example with the file and line."""

from __future__ import annotations

import json
import textwrap

from doc_examples import demo_complete, fences, parse_failures, shell_commands

pytest_plugins = ["pytester"]


def test_markers_belong_to_the_fence_right_after_them():
    text = textwrap.dedent(
        """\
        <!-- example: run demo_out slow -->

        ```bash
        sceval operators
        ```
        <!-- example: skip needs a GPU -->
        Some prose in between.
        ```python
        print(1)
        ```
        - a list item:

          <!-- example: parse -->
          ```
          c3po templates
          ```
        <!-- main-job -->
        ```
        faultline-eval --model sceval_reference
        ```
        <!-- /main-job -->
        """
    )
    found = list(fences(text))
    assert [(f.line, f.lang, f.marker, f.ci_block) for f in found] == [
        (3, "bash", ("run", "demo_out", "slow"), None),
        (8, "python", None, None),  # prose came between: the marker is not this fence's
        (14, "", ("parse",), None),
        (18, "", ("skip", "run", "by", ".ci/run"), "main-job"),
    ]
    assert found[2].body == "c3po templates"  # the list's indentation taken off


def test_shell_lines_are_split_into_commands_as_a_shell_would():
    body = textwrap.dedent(
        """\
        A=1 env B=2 .venv/bin/sceval report demo_out/ \\
            -o out/   # a comment
        lmms-eval --model <model> --tasks a,b 2>&1 | tee log.txt
        for f in a b; do c3po report "$f" -o r/ > /dev/null; done
        """
    )
    assert list(shell_commands(body)) == [
        [".venv/bin/sceval", "report", "demo_out/", "-o", "out/"],
        ["lmms-eval", "--model", "<model>", "--tasks", "a,b"],
        ["tee", "log.txt"],
        ["for", "f", "in", "a", "b"],
        ["c3po", "report", "$f", "-o", "r/"],
        ["done"],
    ]


def test_commands_of_ours_go_through_their_real_parsers():
    assert parse_failures("sceval report demo_out/ -o out/ --cohort stress\nls -la --whatever") == []
    (failure,) = parse_failures("echo ok && .venv/bin/sceval report demo_out/ -o out/ --cohrt stress")
    assert "--cohrt" in failure and "sceval report" in failure
    (failure,) = parse_failures("faultline-eval eval --model sceval_reference --tasks sceval_clean --limitt 2")
    assert "--limitt" in failure
    assert parse_failures("faultline-eval --model sceval_reference --tasks sceval_clean --max-failure-rate 0.1") == []


def test_a_demo_output_counts_when_every_part_of_the_main_job_is_there(tmp_path):
    tasks = ["sceval_clean", "sceval_single_noise_v30", "sceval_bi_tv_drop_words_noise_t30_v30", "c3po_all"]
    (tmp_path / "20261202_results.json").write_text(json.dumps({"results": dict.fromkeys(tasks, {})}))
    assert "report/report.json" in demo_complete(tmp_path)
    for report in ("report", "c3po-report"):
        (tmp_path / report).mkdir()
        (tmp_path / report / "report.json").write_text("{}")
    assert "sceval_tri_" in demo_complete(tmp_path)
    tasks.append("sceval_tri_drop_words_noise_mute_t30_v30_a30")
    (tmp_path / "20261202_results.json").write_text(json.dumps({"results": dict.fromkeys(tasks, {})}))
    assert demo_complete(tmp_path) is None


def test_an_unmarked_or_failing_example_fails_naming_its_line(pytester):
    pytester.makefile(
        ".md",
        README=textwrap.dedent(
            """\
            # A page
            ```bash
            echo unmarked
            ```
            <!-- example: run -->
            ```bash
            echo working in "$PWD" >&2; test ! -e README.md; exit 3
            ```
            <!-- example: run -->
            ```python
            import sys; assert sys.executable
            ```
            <!-- example: skip needs a GPU -->
            ```bash
            nvidia-smi
            ```
            <!-- example: skip -->
            ```text
            output
            ```
            <!-- example: run -->
            <!-- example: parse -->
            ```bash
            true
            ```
            <!-- example: skip output -->
            ```
            sceval report out/ -o report/ --shown-not-parsed
            ```
            """
        ),
    )
    result = pytester.runpytest("-p", "doc_examples", "-p", "no:xdist", "README.md")
    result.assert_outcomes(passed=1, failed=4, skipped=2)  # output is shown, not parsed
    result.stdout.fnmatch_lines(
        [
            "README.md:2: a fence without a marker; put one of <!-- example: run |*",
            "README.md:6: exit status 3 after *",
            "working in */doc-example-*",  # a fresh temp dir, not the checkout
            "README.md:18: `skip` needs a reason*",
            "README.md:23: 2 markers before one fence*",
        ]
    )
