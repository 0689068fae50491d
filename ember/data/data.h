// The data side of training: datasets, wrappers, readers, augmentations and the DataLoader.
// Link the `ember_data` library. See docs/data.md.
#pragma once
#include "ember/data/augment.h"
#include "ember/data/batcher.h"
#include "ember/data/csv.h"
#include "ember/data/dataset.h"
#include "ember/data/image.h"
#include "ember/data/io.h"
#include "ember/data/loader.h"
#include "ember/data/mnist.h"
#include "ember/data/sqlite.h"
#include "ember/data/tabular.h"
#include "ember/data/transform.h"
