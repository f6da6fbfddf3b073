#!/usr/bin/env bash
# Probes unmodified training scripts of two public projects through `colo estimate --script`
# (docs/ESTIMATION.md, "Probing an unmodified training script"): PyTorch's examples
# (github.com/pytorch/examples) and nanoGPT (github.com/karpathy/nanoGPT), checked out by the user
# (nothing here downloads). The data the scripts read is generated (random tokens, random images):
# memory does not depend on its values. Prints one line per script: peak reserved MiB, estimate MiB,
# probe seconds. With VISION=DIR (a pytorch/vision checkout), torchvision's reference classification
# script (DIR/references/classification/train.py) too, on a generated ImageFolder data set. With
# LLMC=DIR (a karpathy/llm.c checkout), its PyTorch reference train_gpt2.py on generated tokens. With
# TIMM=DIR (a huggingface/pytorch-image-models checkout), timm's train.py on that ImageFolder. With
# LIGHTNING=DIR (a Lightning-AI/pytorch-lightning 2.x checkout; lightning_utilities and torchmetrics
# importable, from PYTHONPATH or installed), Lightning's Trainer and Fabric examples. With
# PYTORCH_GAN=DIR (an eriklindernoren/PyTorch-GAN checkout), its MNIST GANs (legacy tensor types).
# With MINGPT=DIR (karpathy/minGPT), its chargpt and adder projects. With PYTORCH_TUTORIAL=DIR
# (yunjey/pytorch-tutorial), its GPU training scripts.
#   [VISION=DIR] [LLMC=DIR] [TIMM=DIR] [LIGHTNING=DIR] [PYTORCH_GAN=DIR] [MINGPT=DIR] [PYTORCH_TUTORIAL=DIR] \
#     bash scripts/probe-real-scripts.sh EXAMPLES_DIR NANOGPT_DIR [WORK_DIR]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 EXAMPLES_DIR NANOGPT_DIR [WORK_DIR]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
colo=$(realpath -m "${COLO:-$root/build/colo}")
py=${COLO_PYTHON:-/usr/bin/python3}
ex=$(cd "$1" && pwd) gpt=$(cd "$2" && pwd)
work=${3:-$(mktemp -d)}
[ -x "$colo" ] || { echo "$colo is missing: build colo first (README)" >&2; exit 2; }
for f in imagenet/main.py dcgan/main.py word_language_model/main.py mnist/main.py vae/main.py mnist_rnn/main.py \
         mnist_forward_forward/main.py gat/main.py super_resolution/main.py fast_neural_style/neural_style/neural_style.py \
         distributed/ddp-tutorial-series/multigpu_torchrun.py distributed/ddp-tutorial-series/multigpu.py; do
  [ -f "$ex/$f" ] || { echo "$ex/$f: not a pytorch/examples checkout" >&2; exit 2; }
done
[ -f "$gpt/train.py" ] || { echo "$gpt/train.py: not a nanoGPT checkout" >&2; exit 2; }
mkdir -p "$work/corpus" "$work/data/MNIST/raw" "$work/cwd/cora" "$work/out" "$work/styles/a" "$work/torch/hub/checkpoints"
ln -sfn ../data "$work/cwd/data"  # mnist_forward_forward reads ./data, the others ../data
"$py" - "$work" "$gpt" <<'PY'
import pickle, struct, sys, numpy as np
work, gpt = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
words = [f"w{i}" for i in range(5000)]
for name, lines in (("train", 2000), ("valid", 200), ("test", 200)):
    with open(f"{work}/corpus/{name}.txt", "w") as f:
        f.write("\n".join(" ".join(rng.choice(words, 30)) for _ in range(lines)))
for prefix, n in (("train", 2000), ("t10k", 200)):
    with open(f"{work}/data/MNIST/raw/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + rng.integers(0, 255, (n, 28, 28), dtype=np.uint8).tobytes())
    with open(f"{work}/data/MNIST/raw/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + rng.integers(0, 10, n, dtype=np.uint8).tobytes())
for d, vocab, n in (("shakespeare_char", 65, 200000), ("openwebtext", 50257, 2000000)):
    import os
    os.makedirs(f"{gpt}/data/{d}", exist_ok=True)
    for split, m in (("train", n), ("val", n // 10)):
        rng.integers(0, vocab, m).astype(np.uint16).tofile(f"{gpt}/data/{d}/{split}.bin")
    if d == "shakespeare_char":
        pickle.dump({"vocab_size": vocab, "itos": {}, "stoi": {}}, open(f"{gpt}/data/{d}/meta.pkl", "wb"))
# Cora's format (gat): 2 708 papers of 1 433 binary word features and one of 7 labels, 5 429 citations
ids = rng.choice(10**6, 2708, replace=False)
labels = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods", "Reinforcement_Learning",
          "Rule_Learning", "Theory"]
with open(f"{work}/cwd/cora/cora.content", "w") as f:
    for i in ids:
        words = (rng.random(1433) < 0.013).astype(int)
        words[rng.integers(1433)] = 1
        f.write("\t".join([str(i), *map(str, words), labels[rng.integers(7)]]) + "\n")
with open(f"{work}/cwd/cora/cora.cites", "w") as f:
    f.writelines(f"{a}\t{b}\n" for a, b in (rng.choice(ids, 2, replace=False) for _ in range(5429)))
# BSDS300's layout (super_resolution) and a style-transfer data set: random 481 x 321 pictures
from PIL import Image
for split, n in (("train", 200), ("test", 20)):
    os.makedirs(f"{work}/cwd/dataset/BSDS300/images/{split}", exist_ok=True)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (321, 481, 3), dtype=np.uint8)).save(
            f"{work}/cwd/dataset/BSDS300/images/{split}/{i}.jpg")
for i in range(16):
    Image.fromarray(rng.integers(0, 255, (321, 481, 3), dtype=np.uint8)).save(f"{work}/styles/a/{i}.jpg")
Image.fromarray(rng.integers(0, 255, (512, 512, 3), dtype=np.uint8)).save(f"{work}/style.jpg")
# fast_neural_style's loss network: VGG-16 weights where torchvision keeps its downloads (random ones:
# memory does not depend on them; a user's own cache has the real file)
import torch, torchvision
torch.save(torchvision.models.vgg16().state_dict(), f"{work}/torch/hub/checkpoints/vgg16-397923af.pth")
PY
probe() {  # DIR LABEL SCRIPT [ARGS...]; $launch: colo's own flags (--nproc-per-node N, --data-parallel N)
  local dir=$1 label=$2 script=$3; shift 3
  # shellcheck disable=SC2086
  (cd "$dir" && "$colo" estimate --script "$script" ${launch:-} --estimator trace --json --probe-timeout 900 -- "$@") |
    "$py" -c 'import json, sys; d = json.load(sys.stdin)
print("%s: peak %.0f MiB, estimate %d MiB, %.1f s" % (sys.argv[1], d["peak_mib"], d["estimate_mib"], d["seconds"]))' "$label"
}
probe "$work/cwd" "imagenet resnet50 -b 64" "$ex/imagenet/main.py" --dummy -a resnet50 -b 64 --workers 0
probe "$work/cwd" "dcgan fake" "$ex/dcgan/main.py" --dataset fake --accel --workers 0 --outf "$work/out"
probe "$work/cwd" "word_language_model LSTM" "$ex/word_language_model/main.py" --data "$work/corpus" --accel --model LSTM --save "$work/out/m.pt"
probe "$work/cwd" "word_language_model Transformer" "$ex/word_language_model/main.py" --data "$work/corpus" --accel --model Transformer --save "$work/out/m.pt"
probe "$work/cwd" "mnist" "$ex/mnist/main.py"
probe "$work/cwd" "vae" "$ex/vae/main.py"
probe "$work/cwd" "mnist_rnn --accel" "$ex/mnist_rnn/main.py" --accel
probe "$work/cwd" "mnist_forward_forward (a layer-wise optimizer each)" "$ex/mnist_forward_forward/main.py"
probe "$work/cwd" "gat (Cora's size)" "$ex/gat/main.py"
probe "$work/cwd" "super_resolution x3" "$ex/super_resolution/main.py" --upscale_factor 3 --accel --threads 0
TORCH_HOME="$work/torch" probe "$work/cwd" "fast_neural_style train -b 4" "$ex/fast_neural_style/neural_style/neural_style.py" \
  train --dataset "$work/styles" --style-image "$work/style.jpg" --save-model-dir "$work/out" --epochs 1 --accel --batch-size 4
probe "$gpt" "nanoGPT shakespeare_char" train.py config/train_shakespeare_char.py
probe "$gpt" "nanoGPT gpt2 124M" train.py
# Several GPUs: DistributedDataParallel as rank 0 (torchrun's processes, or multiprocessing.spawn's)
launch="--data-parallel 2" probe "$work/cwd" "imagenet resnet50 -b 128 --multiprocessing-distributed, 2 GPUs" \
  "$ex/imagenet/main.py" --dummy -a resnet50 -b 128 --workers 0 --multiprocessing-distributed --world-size 1 --rank 0 \
  --dist-url tcp://127.0.0.1:23456 --dist-backend nccl
launch="--nproc-per-node 2" probe "$work/cwd" "ddp-tutorial-series multigpu_torchrun, torchrun 2" \
  "$ex/distributed/ddp-tutorial-series/multigpu_torchrun.py" 5 1 --batch_size 32
launch="--nproc-per-node 4" probe "$gpt" "nanoGPT gpt2 124M, torchrun 4" train.py
imagefolder() {  # an 8-class ImageFolder of random 256 x 320 pictures (train/, val/, validation/)
  [ -d "$work/imagefolder/train" ] && return
  "$py" - "$work/imagefolder" <<'PY'
import os, sys, numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for split in ("train", "val", "validation"):
    for c in range(8):  # 8 classes: the script's top-5 accuracy needs at least 5
        os.makedirs(f"{sys.argv[1]}/{split}/c{c}", exist_ok=True)
        for i in range(8):
            Image.fromarray(rng.integers(0, 255, (256, 320, 3), dtype=np.uint8)).save(f"{sys.argv[1]}/{split}/c{c}/{i}.jpg")
PY
}
if [ -n "${VISION:-}" ]; then
  ref=$(cd "$VISION" && pwd)/references/classification
  [ -f "$ref/train.py" ] || { echo "$ref/train.py: not a pytorch/vision checkout" >&2; exit 2; }
  imagefolder
  common="--data-path $work/imagefolder --workers 0 --epochs 1 --output-dir $work/out"
  # shellcheck disable=SC2086
  {
    probe "$work/cwd" "torchvision reference resnet18 -b 16" "$ref/train.py" $common --model resnet18 --batch-size 16
    probe "$work/cwd" "torchvision reference resnet18 -b 16 --model-ema" "$ref/train.py" $common --model resnet18 \
      --batch-size 16 --model-ema
    probe "$work/cwd" "torchvision reference resnet18 -b 16, amp adamw cosine warmup label-smoothing ta_wide erase clip" \
      "$ref/train.py" $common --model resnet18 --batch-size 16 --amp --opt adamw --lr-scheduler cosineannealinglr \
      --lr-warmup-epochs 1 --label-smoothing 0.1 --auto-augment ta_wide --random-erase 0.1 --clip-grad-norm 1
    probe "$work/cwd" "torchvision reference vit_b_16 -b 4" "$ref/train.py" $common --model vit_b_16 --batch-size 4
    launch="--nproc-per-node 2" probe "$work/cwd" "torchvision reference mobilenet_v3_large -b 16 amp ema sync-bn, torchrun 2" \
      "$ref/train.py" $common --model mobilenet_v3_large --batch-size 16 --amp --model-ema --sync-bn
  }
fi
if [ -n "${LLMC:-}" ]; then
  llmc=$(cd "$LLMC" && pwd)
  [ -f "$llmc/train_gpt2.py" ] || { echo "$llmc/train_gpt2.py: not an llm.c checkout" >&2; exit 2; }
  mkdir -p "$work/llmc/tiktoken-standin"
  # Tokens in llm.c's .bin format: a 256-int32 header (magic 20240520, version 1, count), uint16 ids.
  "$py" - "$work/llmc" <<'PY'
import sys, numpy as np
header = np.zeros(256, dtype=np.int32)
header[:3] = (20240520, 1, 1 << 20)
tokens = np.random.default_rng(0).integers(0, 50257, 1 << 20).astype(np.uint16)
with open(f"{sys.argv[1]}/tokens_val.bin", "wb") as f:
    f.write(header.tobytes() + tokens.tobytes())
PY
  if ! "$py" -c "import tiktoken" 2>/dev/null; then
    # Debian has no tiktoken; the script only names GPT-2's tokenizer (50 257 ids) to decode samples
    # and write gpt2_tokenizer.bin. A stand-in with that vocabulary, not real BPE: memory does not
    # depend on the text.
    cat > "$work/llmc/tiktoken-standin/tiktoken.py" <<'PY'
class Encoding:
    n_vocab = 50257
    max_token_value = eot_token = 50256
    name = "gpt2"

    def encode(self, text, **kwargs):
        return list(text.encode("utf-8"))

    encode_ordinary = encode

    def decode_bytes(self, tokens):
        return bytes(t % 256 for t in tokens)

    def decode(self, tokens, errors="replace"):
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)


def get_encoding(name):
    return Encoding()
PY
  fi
  common="--input_bin $work/llmc/tokens_val.bin --input_val_bin $work/llmc/tokens_val.bin --model d12 --num_iterations 3 --write_tensors 0 --val_loss_every 0 --sample_every 0"
  # shellcheck disable=SC2086
  {
    PYTHONPATH="$work/llmc/tiktoken-standin" probe "$work/llmc" "llm.c train_gpt2.py d12 -b 4 -t 256 fp32" "$llmc/train_gpt2.py" $common \
      --batch_size 4 --sequence_length 256 --total_batch_size 1024 --dtype float32
    PYTHONPATH="$work/llmc/tiktoken-standin" probe "$work/llmc" "llm.c train_gpt2.py d12 -b 4 -t 256 bf16 flash compile" "$llmc/train_gpt2.py" \
      $common --batch_size 4 --sequence_length 256 --total_batch_size 1024 --dtype bfloat16 --flash 1 --compile 1
    PYTHONPATH="$work/llmc/tiktoken-standin" launch="--nproc-per-node 2" probe "$work/llmc" "llm.c train_gpt2.py d12 -b 4 -t 256, torchrun 2" \
      "$llmc/train_gpt2.py" $common --batch_size 4 --sequence_length 256 --total_batch_size 2048 --zero_stage 0
    PYTHONPATH="$work/llmc/tiktoken-standin" launch="--nproc-per-node 2" probe "$work/llmc" "llm.c train_gpt2.py d12 -b 4 -t 256, torchrun 2, ZeRO-1" \
      "$llmc/train_gpt2.py" $common --batch_size 4 --sequence_length 256 --total_batch_size 2048 --zero_stage 1
  }
fi
if [ -n "${TIMM:-}" ]; then
  timm=$(cd "$TIMM" && pwd)
  [ -f "$timm/train.py" ] && [ -d "$timm/timm" ] || { echo "$timm: not a pytorch-image-models checkout" >&2; exit 2; }
  imagefolder
  # timm's loader keeps its workers alive (persistent_workers): it needs at least one.
  common="--data-dir $work/imagefolder --workers 1 --epochs 1 --num-classes 8 --output $work/out"
  # shellcheck disable=SC2086
  {
    PYTHONPATH="$timm" probe "$work/cwd" "timm train.py resnet50 -b 16 (its prefetcher)" "$timm/train.py" $common \
      --model resnet50 --batch-size 16
    PYTHONPATH="$timm" probe "$work/cwd" "timm train.py resnet50 -b 16 --amp --model-ema --opt lamb --mixup 0.8 --cutmix 1.0 --aa rand-m9-mstd0.5-inc1 --reprob 0.25" \
      "$timm/train.py" $common --model resnet50 --batch-size 16 --amp --model-ema --opt lamb --mixup 0.8 --cutmix 1.0 \
      --aa rand-m9-mstd0.5-inc1 --reprob 0.25
    PYTHONPATH="$timm" probe "$work/cwd" "timm train.py vit_small_patch16_224 -b 8 --grad-checkpointing" "$timm/train.py" \
      $common --model vit_small_patch16_224 --batch-size 8 --grad-checkpointing
    PYTHONPATH="$timm" launch="--nproc-per-node 2" probe "$work/cwd" "timm train.py resnet50 -b 16 --sync-bn, torchrun 2" \
      "$timm/train.py" $common --model resnet50 --batch-size 16 --sync-bn
  }
fi
if [ -n "${LIGHTNING:-}" ]; then
  # PyTorch Lightning's own examples, unmodified: the Trainer (its settings from PL_TRAINER_* as
  # Lightning reads them) and Fabric (from LT_*, as `lightning run model` passes them).
  lit=$(cd "$LIGHTNING" && pwd)
  [ -f "$lit/src/lightning/__init__.py" ] && [ -d "$lit/examples/fabric" ] || { echo "$lit: not a pytorch-lightning checkout" >&2; exit 2; }
  litpath="$lit/src${PYTHONPATH:+:$PYTHONPATH}"
  PYTHONPATH="$litpath" "$py" -c "import lightning" ||
    { echo "lightning does not import: it needs lightning_utilities and torchmetrics (installed, or their checkouts' src/ on PYTHONPATH), tqdm, fsspec, yaml" >&2; exit 2; }
  # Fabric's image classifier reads ../../../Datasets from its own directory: copies of the scripts
  # run in $work, so nothing is written into the checkout.
  mkdir -p "$work/lightning/cwd/data/MNIST/raw" "$work/lightning/examples"
  cp -r "$lit/examples/pytorch" "$lit/examples/fabric" "$work/lightning/examples/"
  ln -sfn cwd/data "$work/lightning/Datasets"
  "$py" - "$work/lightning/cwd/data" <<'PY'
import struct, sys, numpy as np
data = sys.argv[1]
rng = np.random.default_rng(0)
# MNIST's full size (the GAN's data module splits 5 000 validation images off 60 000)
for prefix, n in (("train", 60000), ("t10k", 10000)):
    with open(f"{data}/MNIST/raw/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + rng.integers(0, 255, (n, 28, 28), dtype=np.uint8).tobytes())
    with open(f"{data}/MNIST/raw/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + rng.integers(0, 10, n, dtype=np.uint8).tobytes())
# WikiText-2's shape for Lightning's demo data set: 33 277 distinct words (+ <eos>: its vocabulary of
# 33 278, which sizes the embedding and the decoder) in 36 718 lines
words = np.array([f"w{i}" for i in range(33277)])
tokens = np.concatenate([words, rng.choice(words, 36718 * 57 - len(words))])
with open(f"{data}/wikitext-2.txt", "w") as f:
    f.write("\n".join(" ".join(line) for line in tokens.reshape(36718, 57)) + "\n")
PY
  lw="$work/lightning/cwd" le="$work/lightning/examples"
  {
    PYTHONPATH="$litpath" probe "$lw" "lightning Trainer basics/transformer.py" "$le/pytorch/basics/transformer.py"
    PYTHONPATH="$litpath" PL_TRAINER_PRECISION=16-mixed probe "$lw" "lightning Trainer basics/transformer.py, PL_TRAINER_PRECISION=16-mixed" \
      "$le/pytorch/basics/transformer.py"
    # The script launches its second rank itself (Lightning's DDP launcher): the probe runs rank 0
    PYTHONPATH="$litpath" PL_TRAINER_DEVICES=2 PL_TRAINER_STRATEGY=ddp launch="--data-parallel 2" probe "$lw" \
      "lightning Trainer basics/transformer.py, PL_TRAINER_DEVICES=2 PL_TRAINER_STRATEGY=ddp" "$le/pytorch/basics/transformer.py"
    PYTHONPATH="$litpath" probe "$lw" "lightning Trainer domain_templates/generative_adversarial_net.py (two optimizers, manual)" \
      "$le/pytorch/domain_templates/generative_adversarial_net.py"
    PYTHONPATH="$litpath" probe "$lw" "lightning Fabric image_classifier/train_fabric.py" "$le/fabric/image_classifier/train_fabric.py"
    PYTHONPATH="$litpath" LT_PRECISION=16-mixed probe "$lw" "lightning Fabric image_classifier/train_fabric.py, LT_PRECISION=16-mixed" \
      "$le/fabric/image_classifier/train_fabric.py"
    # `lightning run model --devices 2 --strategy ddp --precision bf16-mixed`: torchrun with Fabric's settings
    PYTHONPATH="$litpath" LT_CLI_USED=1 LT_ACCELERATOR=cuda LT_DEVICES=2 LT_STRATEGY=ddp LT_PRECISION=bf16-mixed \
      launch="--nproc-per-node 2" probe "$lw" "lightning Fabric image_classifier/train_fabric.py, lightning run model 2 GPUs ddp bf16-mixed" \
      "$le/fabric/image_classifier/train_fabric.py"
    PYTHONPATH="$litpath" probe "$lw" "lightning Fabric language_model/train.py" "$le/fabric/language_model/train.py"
  }
fi
if [ -n "${PYTORCH_GAN:-}" ]; then
  # PyTorch-GAN's MNIST implementations, unmodified, one epoch asked (the probe stops after two
  # steps): torch.cuda.FloatTensor and Variable, as older code has them. They read
  # ../../data/mnist from their own directory and write images/ there: copies run in $work.
  gan=$(cd "$PYTORCH_GAN" && pwd)
  [ -d "$gan/implementations/wgan_gp" ] || { echo "$gan: not a PyTorch-GAN checkout" >&2; exit 2; }
  mkdir -p "$work/pytorch-gan/data/mnist/MNIST/raw"
  cp -r "$gan/implementations" "$work/pytorch-gan/"
  cp "$work"/data/MNIST/raw/* "$work/pytorch-gan/data/mnist/MNIST/raw/"
  # Not here: began (`.data[0]` of a 0-dim tensor, an IndexError on any PyTorch since 0.5), bgan and
  # dragan (they name an undefined mnist_loader), cogan (SciPy, not installed with colo)
  for s in aae acgan cgan cluster_gan/clustergan dcgan ebgan gan infogan lsgan relativistic_gan sgan softmax_gan \
           wgan wgan_div wgan_gp; do
    d=${s%%/*} f=${s##*/}
    probe "$work/pytorch-gan/implementations/$d" "PyTorch-GAN $d" "$f.py" --n_epochs 1
  done
fi
if [ -n "${MINGPT:-}" ]; then
  # minGPT's two projects, unmodified: chargpt (a character model of ./input.txt, trained until
  # stopped; the probe stops it) and adder (its own data).
  mg=$(cd "$MINGPT" && pwd)
  [ -f "$mg/mingpt/model.py" ] && [ -f "$mg/projects/chargpt/chargpt.py" ] || { echo "$mg: not a minGPT checkout" >&2; exit 2; }
  mkdir -p "$work/mingpt"
  "$py" - "$work/mingpt/input.txt" <<'PY'
import sys, numpy as np
# tiny-shakespeare's length and its 65 characters (the vocabulary sizes the embedding and the head)
chars = np.array(list("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
with open(sys.argv[1], "w") as f:
    f.write("".join(np.random.default_rng(0).choice(chars, 1115394)))
PY
  PYTHONPATH="$mg" probe "$work/mingpt" "minGPT chargpt (gpt-mini, -b 64)" "$mg/projects/chargpt/chargpt.py"
  PYTHONPATH="$mg" probe "$work/mingpt" "minGPT adder" "$mg/projects/adder/adder.py"
fi
if [ -n "${PYTORCH_TUTORIAL:-}" ]; then
  # yunjey/pytorch-tutorial's GPU training scripts, unmodified. They read ../../data (MNIST) and
  # write samples beside themselves: copies run in $work. Not here: logistic_regression and
  # pytorch_basics train on the CPU (the probe says so), linear_regression imports matplotlib,
  # deep_residual_network reads CIFAR-10 (torchvision checks the real files' MD5 sums), and
  # image_captioning needs COCO and its vocabulary.
  tut=$(cd "$PYTORCH_TUTORIAL" && pwd)
  [ -f "$tut/tutorials/02-intermediate/language_model/main.py" ] || { echo "$tut: not a pytorch-tutorial checkout" >&2; exit 2; }
  rm -rf "$work/pytorch-tutorial" && mkdir -p "$work/pytorch-tutorial"
  cp -r "$tut/tutorials" "$work/pytorch-tutorial/"
  tw="$work/pytorch-tutorial/tutorials"
  mkdir -p "$tw/data/MNIST/raw" "$tw/02-intermediate/language_model/data" "$work/torch/hub/checkpoints"
  cp "$work"/data/MNIST/raw/* "$tw/data/MNIST/raw/"
  # Generated in the copies, so that the figures do not depend on the checkout: the language model's
  # Penn Treebank (its 10 000 words, 42 068 lines, 929 589 tokens with <eos>), neural_style_transfer's
  # pictures (content 600 x 400, style 512 x 512) and its VGG-19 weights, random (memory does not
  # depend on values; the vocabulary and the picture sizes set the shapes).
  "$py" - "$tw" "$work/torch/hub/checkpoints/vgg19-dcbb9e9d.pth" <<'PY'
import os, sys, numpy as np, torch, torchvision
from PIL import Image
tw, vgg = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
words = np.array([f"w{i}" for i in range(10000)])
tokens = np.concatenate([words, rng.choice(words, 887521 - len(words))])
rng.shuffle(tokens)
cuts = np.sort(rng.choice(np.arange(1, len(tokens)), 42067, replace=False))
with open(f"{tw}/02-intermediate/language_model/data/train.txt", "w") as f:
    f.write("\n".join(" ".join(line) for line in np.split(tokens, cuts)) + "\n")
png = f"{tw}/03-advanced/neural_style_transfer/png"
os.makedirs(png, exist_ok=True)
Image.fromarray(rng.integers(0, 255, (400, 600, 3), dtype=np.uint8)).save(f"{png}/content.png")
Image.fromarray(rng.integers(0, 255, (512, 512, 3), dtype=np.uint8)).save(f"{png}/style.png")
torch.save(torchvision.models.vgg19().state_dict(), vgg)
PY
  for s in 01-basics/feedforward_neural_network 02-intermediate/convolutional_neural_network \
           02-intermediate/recurrent_neural_network 02-intermediate/bidirectional_recurrent_neural_network \
           02-intermediate/language_model 03-advanced/variational_autoencoder 03-advanced/generative_adversarial_network \
           03-advanced/neural_style_transfer; do
    TORCH_HOME="$work/torch" probe "$tw/$s" "pytorch-tutorial ${s#*/}" main.py
  done
fi
