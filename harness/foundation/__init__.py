"""The foundation layer: the modules every other layer may use, importing nothing above them.

Each is small, standard-library first and torch-free, and imports from the harness only this
package and `harness.errors`:

- `atomic`: atomic file writes (a file has its complete new content or is untouched);
- `output_set`: several files written as one set (a crash leaves the old set or the new one);
- `locations`: every folder the harness reads or writes (flag > environment > per-user home);
- `progress`: phase bars with time estimates, and the slow-encoding warning;
- `hardware`: the accelerators' published bf16 rates;
- `provenance`: where a result came from (versions, commit, device, time);
- `user_key`: the per-user key whose HMACs authenticate what the harness remembers on disk;
- `markdown_table`: the one renderer of the pages' Markdown tables, every cell from data escaped.

Import the module you need (`from harness.foundation.atomic import atomic_write_text`); this
package itself imports none of them. Plugins reach what they need through `harness.api`.
"""
