"""`normjax table`: one Table 1 over every result kind normjax writes, with honest uncertainty.

`readers` (evaluate JSON, DQN runs, llm-eval runs, play studies -> `records.Result`),
`stats` (cluster bootstrap over norms, paired sign-flip test, Holm; numpy only),
`cells` (a result's cells and paired comparisons), `render` (markdown, csv, LaTeX,
JSON), `figures` (matplotlib), `paper` (the paper's published numbers), `table_a5`
(finetune-eval outputs as Table A5 rows), `table` (the command's body), `after_train`
(`normjax train`'s closing table).  Nothing here imports JAX.  Method: docs/results.md.
"""
