// Shapes of the API's JSON documents (server/api.py).

export interface Finding {
  rule?: string;
  kind: string;
  title: string;
  function?: string;
  dso?: string;
  file?: string;
  line?: number;
  share?: number;
  estimated_gain?: number;
  confidence?: number;
  evidence?: string[];
  suggestion?: string;
  fix?: Record<string, unknown>;
  verified?: { ratio?: number; ci95?: [number, number]; runs?: number } & Record<string, unknown>;
  details?: Record<string, unknown>;
}

export interface RunSummary {
  id: string;
  command: string;
  mode: string;
  started: string;
  duration_s: number | null;
  exit_status: number | null;
  unit: string;
  total: number;
  samples: number;
  top_finding?: Finding | null;
}

export interface RunDetail extends RunSummary {
  cwd: string;
  host: string;
  cpu_model: string;
  kernel: string;
  git_rev: string;
  source: string;
  dsos: { path: string; build_id: string }[];
  threads: { tid: number; pid: number; name: string }[];
  states: string[];
  findings: number;
  experiments: number;
}

export interface TopRow {
  function: string;
  dso: string;
  file: string;
  line: number;
  self: number;
  total: number;
}

export interface TopDoc {
  run: string;
  unit: string;
  total: number;
  samples: number;
  by: string;
  rows: TopRow[];
}

export interface Neighbour {
  function: string;
  total: number;
  share: number;
}

export interface CallGraphDoc {
  function: string;
  self: number;
  total: number;
  callers: Neighbour[];
  callees: Neighbour[];
}

export interface SourceLine {
  line: number;
  self: number;
  total: number;
  source: string;
}

export interface SourceFile {
  file: string;
  found: boolean;
  self: number;
  lines: SourceLine[];
}

export interface AnnotateDoc {
  function: string;
  files: SourceFile[];
}

export interface DiffRow {
  function: string;
  dso: string;
  file: string;
  line: number;
  self_a: number;
  self_b: number;
  delta_self: number;
  total_a: number;
  total_b: number;
  delta_total: number;
}

export interface DiffDoc {
  a: string;
  b: string;
  unit: string;
  total_a: number;
  total_b: number;
  by: string;
  rows: DiffRow[];
}

export interface Experiment {
  name: string;
  data: unknown;
}
