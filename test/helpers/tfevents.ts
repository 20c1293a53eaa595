// The reader lives in the package (the `report` command uses it); tests keep importing it here.
export * from "../../ts/report/tfevents.js";
