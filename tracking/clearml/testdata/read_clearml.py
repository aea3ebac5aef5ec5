"""Parse a goaccel ClearML offline session with clearml's own import code.

Usage: python read_clearml.py SESSION.zip

Task.import_offline_session needs a ClearML server, so this replays its
steps up to the point where it would call the server: clearml's
extract_zip_archive, the task.json load, import_task's field filter
(tasks.EditRequest's properties) and an EditRequest built from them (which
type-checks every field), then clearml's own Metrics.report_offline_session
and TaskHandler.report_offline_session with a session object that records
the events.add_batch requests instead of sending them. Debug-sample files
are uploaded by clearml (StorageManager) to a local file:// "server"
folder; their paths relative to it and sha256 digests are printed too.
Prints JSON.
"""
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from clearml import Task
from clearml.backend_api.services import tasks
from clearml.backend_interface.metrics.interface import Metrics
from clearml.backend_interface.task.log import TaskHandler
from clearml.storage.archive import extract_zip_archive
from clearml.utilities.config import text_to_config_dict


class RecordingSession:
    def __init__(self):
        self.requests = []

    def send(self, request, *args, **kwargs):
        self.requests.append(request)
        return None


class ImportedTask:
    id = "imported-task"

    def __init__(self):
        self.session = RecordingSession()

    def _get_default_report_storage_uri(self):
        return "file:///nonexistent"


def as_dict(event):
    return event if isinstance(event, dict) else event.to_dict()


def main():
    folder = tempfile.mkdtemp(prefix="clearml-offline-")
    extract_zip_archive(archive_path=sys.argv[1], target=folder)
    with open(Path(folder) / Task._offline_filename, "rt") as f:
        export_data = json.load(f)
    valid_fields = list(tasks.EditRequest._get_data_props().keys())
    fields = {k: export_data[k] for k in valid_fields if k in export_data}
    fields.pop("task", None)
    edit = tasks.EditRequest(task="imported-task", **fields)
    edit.validate()
    configuration = {
        name: {"type": item.get("type"), "value": text_to_config_dict(item["value"])}
        for name, item in (export_data.get("configuration") or {}).items()
    }
    task = ImportedTask()
    remote = tempfile.mkdtemp(prefix="clearml-remote-")
    if not Metrics.report_offline_session(
        task, folder, remote_url="file://" + remote, only_with_id=export_data["id"], session=task.session
    ):
        raise SystemExit("clearml found no metrics.jsonl")
    scalars = [as_dict(e) for r in task.session.requests for e in r.requests]
    task.session = RecordingSession()
    TaskHandler.report_offline_session(task, folder)
    logs = [as_dict(e) for r in task.session.requests for e in r.requests]
    uploads = {}
    for root, _, files in os.walk(remote):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                uploads[os.path.relpath(path, remote)] = hashlib.sha256(f.read()).hexdigest()
    print(json.dumps({
        "remote": "file://" + remote,
        "uploads": uploads,
        "id": export_data["id"],
        "name": edit.name,
        "project_name": export_data.get("project_name"),
        "edit_fields": sorted(fields),
        "configuration": configuration,
        "scalars": scalars,
        "logs": logs,
    }, default=str))


if __name__ == "__main__":
    main()
