"""Log media with the real wandb SDK, offline, as a reference for goaccel.

Usage: python wandb_reference.py DIR

Writes an offline run under DIR/wandb holding, at step 3, "single" (one
4x6 wandb.Image with a caption), "several" (a list of two wandb.Images with
captions) and "tab" (a wandb.Table), the same shapes that goaccel's
wandb tests log, and prints the run directory.
"""
import sys

import numpy as np
import wandb


def main():
    run = wandb.init(project="reference", dir=sys.argv[1])
    pixels = (np.arange(4 * 6 * 3) % 251).astype("uint8").reshape(4, 6, 3)
    run.log({
        "single": wandb.Image(pixels, caption="one"),
        "several": [wandb.Image(pixels, caption="a"), wandb.Image(pixels[::-1], caption="b")],
        "tab": wandb.Table(columns=["a", "b"], data=[[1, "x"], [2.5, None]]),
    }, step=3)
    run.finish()
    print(run.dir.rsplit("/files", 1)[0])


if __name__ == "__main__":
    main()
