"""What a run will be before it starts: its arguments, validated once for `qvr run` and
the editor alike (`run_arguments`), and which programs of a checked module run, on
which runtime, and why not (`runnable`).

Above the checker and sizing, below the runtime: a run is planned from the checked
module, never from the syntax it came from.
"""
