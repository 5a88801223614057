/** A module the runtime would refuse, or a build that failed. */
export declare class ContractBuildError extends Error {}
/** The asconfig.json contracts extend. */
export declare const SHARED_CONFIG: string;
/** The `runnel` host functions of ABI v1 and their signatures. */
export declare const HOST_FUNCTIONS: Record<string, string>;
/** Checks a module against what the runtime accepts; returns its contract function names. */
export declare function checkModule(wasm: Uint8Array, what?: string): string[];
/** Builds and checks the contract whose entry file is `entry`. */
export declare function buildContract(options: {
  entry: string;
  outFile: string;
  config?: string;
  textFile?: string;
  quiet?: boolean;
}): Promise<{ outFile: string; bytes: number; functions: string[] }>;
