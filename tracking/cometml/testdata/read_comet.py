"""Read a goaccel Comet offline archive with comet_ml's own offline code.

Usage: python read_comet.py ARCHIVE.zip

It unzips the archive with comet_ml.offline.unzip_offline_archive, builds
comet_ml's OfflineSender over it (which loads and schema-validates
experiment.json) and runs the sender's message loop with schema validation
errors raised, replacing only the two network clients with recorders. It
prints one JSON object: the experiment metadata and every metric,
parameter and "other" value the sender would have uploaded.
"""
import json
import sys

from comet_ml.offline import OfflineSender, unzip_offline_archive


class RecordingConnection:
    def __init__(self):
        self.metrics = []
        self.parameters = []

    def log_metrics_batch(self, items, compress=True, **kwargs):
        self.metrics.extend(item.message.metric for item in items)

    def log_parameters_batch(self, items, compress=True, **kwargs):
        self.parameters.extend(item.message.param for item in items)

    def report(self, event_name=None, err_msg=None):
        raise AssertionError("comet_ml reported %s: %s" % (event_name, err_msg))


class RecordingRestClient:
    def __init__(self):
        self.others = {}
        self.errors = []

    def log_experiment_other(self, experiment_key, key, value, **kwargs):
        self.others[key] = value

    def update_experiment_error_status(self, experiment_key, is_alive, error_value, **kwargs):
        self.errors.append(error_value)


def main():
    directory = unzip_offline_archive(sys.argv[1])
    connection = RecordingConnection()
    rest = RecordingRestClient()
    sender = OfflineSender(
        api_key="offline-test",
        offline_dir=directory,
        raise_validation_error_for_tests=True,
        connection=connection,
        rest_api_client=rest,
    )
    sender._send_messages()
    if rest.errors:
        raise SystemExit("comet_ml's offline sender reported errors: %r" % rest.errors)
    print(json.dumps({
        "experiment_id": sender.experiment_id,
        "metadata": sender.metadata,
        "metrics": connection.metrics,
        "parameters": connection.parameters,
        "others": rest.others,
    }))


if __name__ == "__main__":
    main()
