"""GSM8K: real test questions from the offline package, crafted replies, scored end to end through a server."""

import json

import pytest
import streaming_server

from gpubench.loadgen.gsm8k import disagreements, load_questions, parse_answer, run_gsm8k


@pytest.mark.parametrize(("reply", "answer"), [
    ("She sells 9 eggs at $2 each, so she makes 18 dollars.\n#### 18", "18"),
    ("#### 1,000", "1000"),
    ("The total is $18.00.", "18"),
    ("3 + 4 = 7, so the answer is 7.", "7"),
    ("It is 5.\n#### 72\nOn second thought, 80.", "72"),  # the #### line wins over a later number
    ("The answer is \\boxed{42}", "42"),
    ("A drop of -3.50 degrees", "-3.5"),
    ("I cannot tell.", None),
])
def test_answers_are_read_from_the_hash_line_or_the_last_number(reply, answer):
    assert parse_answer(reply) == answer


def test_questions_come_from_the_test_set_in_order():
    questions = load_questions(3)
    assert questions[0].question.startswith("Janet’s ducks lay 16 eggs per day")
    assert [q.answer for q in questions] == ["18", "3", "70000"]
    assert len(load_questions()) == 1319


def test_two_servers_scored_and_compared(tmp_path):
    questions = load_questions(6)
    right = [f"Step by step...\n#### {q.answer}" for q in questions]
    # server A misses question 5; server B misses 2 and 5 (differently) and answers 4 in words-then-number form
    a = right[:5] + ["#### 1"]
    b = right[:2] + [f"The answer is {int(questions[2].answer) + 1}."] + right[3:4] + \
        [f"So {questions[4].answer} in total."] + ["#### 2"]
    files = []
    for name, replies in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps([[q.question, r] for q, r in zip(questions, replies, strict=True)]))
        files.append(path)
    results = []
    for path in files:
        with streaming_server.running(ttft_ms=5, token_ms=1, replies=path) as url:
            result = run_gsm8k(url, "m", n=6, concurrency=4, max_tokens=64)
            results.append(result)
            assert result.total == 6 and result.metrics()["tokens_streamed_pct"] == 100  # every request streamed
    ra, rb = results
    assert (ra.correct, ra.total, ra.accuracy) == (5, 6, pytest.approx(500 / 6))
    assert (rb.correct, rb.total) == (4, 6)
    assert [x.correct for x in rb.answers] == [True, True, False, True, True, False]
    assert ra.wall_s > 0 and ra.metrics()["gsm8k_correct"] == 5
    # the pass says, as every load does, whether the client was the limit and whether what arrived was counted
    client = ra.metrics()
    assert client["client_processes"] == 1 and 0 < client["client_cpu_pct"] < 100 and client["client_bound"] == 0
    assert client["usage_mismatches"] == 0
    d = disagreements(ra, rb)
    assert (d.total, d.same_answer, d.different_answer, d.only_a_correct, d.only_b_correct) == (6, 4, 2, 1, 0)


def test_a_pass_whose_server_counts_other_tokens_says_so(tmp_path):
    """A vLLM-like server whose chunks name their tokens, and whose usage counts 2 more than they named."""
    questions = load_questions(3)
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([[q.question, f"#### {q.answer}"] for q in questions]))
    with streaming_server.running(ttft_ms=5, token_ms=1, replies=path, usage_extra=2, flavor="vllm") as url:
        result = run_gsm8k(url, "m", n=3, concurrency=3, max_tokens=64)
    assert result.correct == 3 and result.metrics()["usage_mismatches"] == 3
