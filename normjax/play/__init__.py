"""`normjax play`: a person plays the protocol in the browser, recorded like any other newcomer.

`normjax.play.session`: one participant's protocol run (the human as an external
agent of the LLM runner, a durable action log, resume); `normjax.play.app`: the
Flask web app (needs the ``[play]`` extra); `normjax.play.study`: study mode
(norms assigned per participant, the consent record); `normjax.play.consent`:
the consent text as escaped HTML; `normjax.play.export`: `normjax play-export`
(all participants in one result, beside model rows); `normjax.play.report`: its human rows
(best per norm, means with 95% intervals); `normjax.play.guard`: tokens, request limits,
headers, the folder lock; `normjax.play.server`: the warm-up and the WSGI server;
`normjax.play.design`: the paper's pool and the norm-balanced assignment;
`normjax.play.questionnaire`; `normjax.play.admin`.  docs/play.md describes a study.
"""
