/* shared parts of the direct baseline: being written */
