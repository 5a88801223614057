/** A checkpointer that survives the process: a small JSON file, replaced atomically. */

import { readFile, rename, writeFile } from "node:fs/promises";
import {
  parseCheckpoint,
  serializeCheckpoint,
  StateCheckpointer,
  type Checkpointer,
  type CheckpointState,
} from "../checkpoint.js";

/**
 * A checkpointer stored in the file at `path` (created on the first checkpoint). Each
 * checkpoint is written to `path.tmp` then renamed over `path`, so a crash leaves the
 * old checkpoint or the new one, never half of one.
 */
export async function fileCheckpointer(path: string): Promise<Checkpointer> {
  let initial: CheckpointState = {};
  try {
    initial = parseCheckpoint(await readFile(path, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new Error(`reading the checkpoint ${path}: ${String(error)}`, { cause: error });
    }
  }
  const temporary = `${path}.tmp`;
  return new StateCheckpointer(initial, async (state) => {
    await writeFile(temporary, serializeCheckpoint(state));
    await rename(temporary, path);
  });
}
