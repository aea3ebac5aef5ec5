"""Read a goaccel Comet offline archive with comet_ml's own offline code.

Usage: python read_comet.py ARCHIVE.zip

It unzips the archive with comet_ml.offline.unzip_offline_archive, builds
comet_ml's OfflineSender over it (which loads and schema-validates
experiment.json) and runs the sender's message loop with schema validation
errors raised, replacing only the two network clients with recorders. It
prints one JSON object: the experiment metadata and every metric,
parameter and "other" value the sender would have uploaded, and each file
upload (images) with the sha256 of the file the archive holds for it.
"""
import hashlib
import json
import sys

from comet_ml.offline import OfflineSender, unzip_offline_archive


class RecordingConnection:
    server_address = "recorded://server/"

    def __init__(self):
        self.metrics = []
        self.parameters = []

    def log_metrics_batch(self, items, compress=True, **kwargs):
        self.metrics.extend(item.message.metric for item in items)

    def log_parameters_batch(self, items, compress=True, **kwargs):
        self.parameters.extend(item.message.param for item in items)

    def get_upload_url(self, upload_type):
        return "recorded://" + upload_type

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


class RecordingUploads:
    def __init__(self):
        self.uploads = []

    def upload_file_thread(self, options, **kwargs):
        with open(options.file_path, "rb") as f:
            data = f.read()
        self.uploads.append({
            "upload_type": options.upload_type,
            "endpoint": options.upload_endpoint,
            "additional_params": options.additional_params,
            "metadata": options.metadata,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
        })


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
    uploads = RecordingUploads()
    sender.file_upload_manager = uploads
    # What the sender learns from the server before sending messages.
    sender.run_id = "offline-test-run"
    sender.project_id = "offline-test-project"
    sender._send_messages()
    if rest.errors:
        raise SystemExit("comet_ml's offline sender reported errors: %r" % rest.errors)
    print(json.dumps({
        "experiment_id": sender.experiment_id,
        "metadata": sender.metadata,
        "metrics": connection.metrics,
        "parameters": connection.parameters,
        "others": rest.others,
        "uploads": uploads.uploads,
    }))


if __name__ == "__main__":
    main()
