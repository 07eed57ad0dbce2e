"""`codebox eval`: SWE-bench's datasets and predictions, graded by SWE-bench's rules, on the batch engines.

dataset.py + repos.py read the instances as shipped; predictions.py the predictions; instance.py
evaluates one (apply.py, integrity.py, env.py, pytest_run.py + boot_pytest.py in the sandbox) and
returns its evidence (job.py); verdict.py + grading.py + junit.py judge the evidence; store.py keeps
it in --out; report.py writes results.json and SWE-bench's report; run.py drives many instances and
regrades a kept run.
"""
