// Fixture: the controller's options, read by its loops.
export const options = 1;
