"""Every hook Pinakes offers to plugins, in one place.

Each hook is a ``register_*(register)`` call: core passes a ``register`` callback
and collects what plugins hand it into a dict keyed by id (see
``pinakes.plugins``). A duplicate id is an error naming both plugins. Hooks
only ever gain arguments; an implementation may accept any subset of them.
"""

from __future__ import annotations

from pluggy import HookimplMarker, HookspecMarker

hookspec = HookspecMarker("pinakes")
hookimpl = HookimplMarker("pinakes")


@hookspec
def register_embedders(register):  # type: ignore[no-untyped-def]
    """Offer text embedders.

    Called once, the first time core needs the embedder table (sync, search).
    Call ``register(embedder_class)`` for each embedder. The class must have
    class attributes ``id`` (stable string recorded in the store: changing the
    configured id re-embeds the KB), ``dim`` and ``max_tokens`` (the window
    chunks are sized to fit), a no-argument constructor that loads nothing,
    and the methods ``count_tokens(texts) -> list[int]``,
    ``embed(texts, *, batch_size=32, progress=None) -> numpy.ndarray`` of shape
    ``(n, dim)`` float32 with L2-normalised rows, and
    ``embed_query(text) -> numpy.ndarray`` of shape ``(dim,)``. An optional
    class attribute ``thread_safe = True`` promises that ``embed_query`` may
    run on another thread while the caller works: search then embeds the
    query while the FTS5 query runs.
    ``[embedding] model`` in ``pinakes.toml`` selects one by ``id``.
    """


@hookspec
def register_edge_derivers(register):  # type: ignore[no-untyped-def]
    """Offer graph edge derivers, run by ``pnk sync`` (never an LLM: sync is free).

    Call ``register(deriver)`` with an object that has a ``name`` (recorded as
    the ``deriver`` of every edge it makes) and a method
    ``derive(doc, conn) -> Iterable[Edge]``, called per added or changed
    document (a :class:`pinakes.graph.DocView`) with the open SQLite connection
    in the sync's write transaction, so the deriver can read documents, chunks,
    links and existing nodes. Core deletes the document's old edges first.
    Optional: ``begin(changes, conn)``, ``wants_full(changes, conn) -> bool``,
    ``affected(changes, conn) -> Iterable[doc key]`` (other documents to
    re-derive), ``for_kb(kb)`` (the per-KB instance), ``default_enabled``
    (False: runs only with ``[graph] NAME = true``) and ``supersedes`` (names
    of derivers it replaces); see docs/plugins/plugin-hooks.md.
    """


@hookspec
def register_graph_channels(register):  # type: ignore[no-untyped-def]
    """Offer query-time graph channels (selected by ``[retrieval] graph_channel``).

    Call ``register(channel)`` with an object that has a ``name`` (what users
    put in ``graph_channel`` or ``pnk search --channel``) and a method
    ``search(context) -> list[tuple[int, float]]``: ranked ``(chunk_rowid,
    score)`` pairs, best first. ``context`` carries the open store, the query
    text and vector, the full cosine vector over all chunks, the fused top
    hits (the roots) and the retrieval config. An empty list is a valid answer
    (a sparse graph); fusion then uses only the lexical and dense lists.
    With ``[retrieval] graph_fusion = "final"`` a non-empty list replaces the
    fused ranking instead of joining it as a third list; with ``"auto"`` (the
    default) the channel's optional ``fusion`` attribute (``"rrf"`` or
    ``"final"``) decides, and a channel without one is fused by RRF.
    An optional ``explain(context, chunk_ids)`` says why: called after an
    explained search (``pnk search --explain``; ``context.explain`` was True
    during ``search``, and ``context.record`` holds what the channel kept),
    it returns ``{"channel": {...}, "hits": {chunk_id: {...}}}`` of JSON
    values: the seeds, and per chunk the path that carried its score.
    An optional ``prepare(kb, store, graph)`` builds whatever the channel
    caches per graph generation; long-lived processes (``pnk serve``) call it
    when they start and after each sync, so no query pays for it
    (:meth:`pinakes.kb.KB.warm_graph`).
    """


@hookspec
def register_llm_backends(register):  # type: ignore[no-untyped-def]
    """Offer LLM backends for the paid path (``pnk ask``); never called by sync.

    Call ``register(backend_class)``; the class has an ``id`` (what
    ``[llm] backend`` names), a constructor taking the ``[llm]`` config
    table, ``price(model) -> (eur_per_1k_input, eur_per_1k_output)`` so the
    budget can reserve a call's worst case before making it, and
    ``complete(messages, *, max_tokens) -> (text, input_tokens, output_tokens)``.
    Optional, used by the budget when present: ``count_tokens(messages) -> int``
    (an upper bound on the request's input tokens; the budget never reserves
    less than its own UTF-8-byte bound) and ``attempt(messages, *, max_tokens,
    purpose) -> Completion`` (one try, no retries, raising
    ``pinakes_deep.backends.Transient`` for a retryable failure), which lets
    the budget reserve and settle each attempt; see plugins/pinakes-deep.
    """


@hookspec
def register_importers(register):  # type: ignore[no-untyped-def]
    """Offer importers that turn a foreign KB layout into a Pinakes KB.

    Call ``register(importer)`` with an object that has a ``name`` and
    ``detect(path) -> bool``. Commands that adopt a folder (``pnk adopt``)
    ask every importer and use the one that recognises it
    (:func:`pinakes.plugins.importer_for`); ``pnk adopt`` then calls
    ``importer.adopt(path, name=..., dry_run=...)``, which returns an object
    with ``root`` (the adopted folder) and ``to_dict()``.
    """


@hookspec(firstresult=True)
def importer_for_path(path):  # type: ignore[no-untyped-def]
    """Choose the importer for the folder ``path`` (a :class:`pathlib.Path`).

    Return an importer object, or ``None`` when this plugin does not recognise
    the folder. Stops at first non-None result; core falls back to asking each
    registered importer's ``detect`` when every plugin returns ``None``.
    """


@hookspec
def register_commands(cli):  # type: ignore[no-untyped-def]
    """Add commands to the ``pnk`` command line.

    Called once when the CLI starts, after core's own commands exist. ``cli``
    is the top-level :class:`click.Group`; decorate new commands with
    ``@cli.command()``. Keep imports inside the command bodies so a slow or
    broken dependency cannot slow down or break other commands.
    """


@hookspec
def register_eval_modes(register):  # type: ignore[no-untyped-def]
    """Offer other ways for ``pnk eval`` to run a golden set (``--deep``: the paid path).

    Call ``register(mode)`` with an object that has a ``name`` (``pnk eval
    --mode NAME``; ``--deep`` is ``--mode deep``), a one-line ``help`` and
    ``run(kb, questions, relevant, source, *, json_, yes)``: called once core
    has opened the KB and loaded (and sampled) the questions, with
    ``relevant`` mapping each question id to its relevant document keys and
    ``source`` describing the golden set; it prints its own report (JSON with
    ``json_``) and must not spend money without asking unless ``yes``.
    """


@hookspec
def register_store_schema(register):  # type: ignore[no-untyped-def]
    """Declare extra tables a plugin keeps in the derived store.

    Call ``register(name, version, sql)``: ``sql`` is a script of
    ``CREATE TABLE IF NOT EXISTS`` statements run when the store is created;
    ``version`` is folded into the store's schema version, so installing,
    removing or upgrading the plugin rebuilds the (derived, disposable) store
    instead of migrating it.
    """
