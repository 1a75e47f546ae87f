// The public API of Strata lives in this module.
